package model

import "slices"

// clone returns a copy of s that shares nothing mutable with it, so that
// what Of hands out cannot change the parsed schema that every later
// caller, policies included, is given.
func (s *Schema) clone() *Schema {
	c := *s
	c.Fields = cloneFields(s.Fields)
	c.Auto = slices.Clone(s.Auto)
	for i := range c.Auto {
		c.Auto[i].Field = cloneField(c.Auto[i].Field)
		c.Auto[i].Scope = cloneFields(c.Auto[i].Scope)
		c.Auto[i].scopeNames = slices.Clone(c.Auto[i].scopeNames)
		if f := c.Auto[i].Format; f != nil {
			ff := *f
			c.Auto[i].Format = &ff
		}
	}
	c.Audit = slices.Clone(s.Audit)
	for i := range c.Audit {
		c.Audit[i].Field = cloneField(c.Audit[i].Field)
	}
	c.Policies = slices.Clone(s.Policies)
	for i := range c.Policies {
		c.Policies[i].Field = cloneField(c.Policies[i].Field)
		c.Policies[i].Options = slices.Clone(c.Policies[i].Options)
	}
	c.Indexes = slices.Clone(s.Indexes)
	for i := range c.Indexes {
		ix := &c.Indexes[i]
		ix.Keys = slices.Clone(ix.Keys)
		ix.PartialFilter = slices.Clone(ix.PartialFilter)
		if ix.ExpireAfterSeconds != nil {
			secs := *ix.ExpireAfterSeconds
			ix.ExpireAfterSeconds = &secs
		}
	}
	c.OtherTags = slices.Clone(s.OtherTags)
	c.ID = c.same(s.ID)
	c.Version = nil
	for i := range s.Auto {
		if &s.Auto[i] == s.Version {
			c.Version = &c.Auto[i]
		}
	}
	return &c
}

// same returns c's field at the position f has in the schema c was
// cloned from, or nil.
func (c *Schema) same(f *Field) *Field {
	if f == nil {
		return nil
	}
	for i := range c.Fields {
		if c.Fields[i].BSON == f.BSON {
			return &c.Fields[i]
		}
	}
	return nil
}

func cloneFields(fs []Field) []Field {
	out := slices.Clone(fs)
	for i := range out {
		out[i] = cloneField(out[i])
	}
	return out
}

func cloneField(f Field) Field {
	f.Index = slices.Clone(f.Index)
	return f
}
