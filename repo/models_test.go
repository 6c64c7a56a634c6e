package repo_test

import (
	"context"
	"errors"
	"strconv"

	"github.com/kamva/mgm/v3"
	"go.mongodb.org/mongo-driver/mongo"
)

// journal records hooks and events in the order they happen.
type journal struct{ lines []string }

func (j *journal) add(s string) { j.lines = append(j.lines, s) }

// hooked has every mgm hook, in the ctx form, and writes each to its
// journal. failOn makes the named hook fail.
type hooked struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string   `bson:"name"`
	j                *journal `bson:"-"`
	failOn           string   `bson:"-"`
}

func (h *hooked) hook(name string) error {
	if h.j != nil {
		h.j.add(name)
	}
	if h.failOn == name {
		return errors.New(name + " refused")
	}
	return nil
}

func (h *hooked) Creating(context.Context) error                     { return h.hook("Creating") }
func (h *hooked) Created(context.Context) error                      { return h.hook("Created") }
func (h *hooked) Updating(context.Context) error                     { return h.hook("Updating") }
func (h *hooked) Updated(context.Context, *mongo.UpdateResult) error { return h.hook("Updated") }
func (h *hooked) Saving(context.Context) error                       { return h.hook("Saving") }
func (h *hooked) Saved(context.Context) error                        { return h.hook("Saved") }
func (h *hooked) Deleting(context.Context) error                     { return h.hook("Deleting") }
func (h *hooked) Deleted(context.Context, *mongo.DeleteResult) error { return h.hook("Deleted") }

// plain is an mgm model with DefaultModel's timestamps and no hooks.
type plain struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
	Age              int    `bson:"age"`
}

// counter has an int64 _id, as in the mgo counter example, through its
// own mgm.Model methods.
type counter struct {
	ID   int64  `bson:"_id"`
	Name string `bson:"name"`
}

func (c *counter) PrepareID(id any) (any, error) {
	if s, ok := id.(string); ok {
		return strconv.ParseInt(s, 10, 64)
	}
	return id, nil
}
func (c *counter) GetID() any             { return c.ID }
func (c *counter) SetID(id any)           { c.ID = id.(int64) }
func (c *counter) CollectionName() string { return "counters_by_int" }

// tagged has a string _id chosen by the caller.
type tagged struct {
	ID    string `bson:"_id"`
	Label string `bson:"label"`
}

func (t *tagged) PrepareID(id any) (any, error) { return id, nil }
func (t *tagged) GetID() any                    { return t.ID }
func (t *tagged) SetID(id any)                  { t.ID, _ = id.(string) }

// valueModel implements mgm.Model with value receivers, so the type itself,
// not a pointer to it, is the model: unsupported.
type valueModel struct{}

func (valueModel) PrepareID(id any) (any, error) { return id, nil }
func (valueModel) GetID() any                    { return nil }
func (valueModel) SetID(any)                     {}
