package model_test

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

type User struct {
	mgm.DefaultModel `bson:",inline"`
	UserID           string `bson:"userId" auto:"uuid"`
	LongID           int64  `bson:"longId" auto:"inc,batch=500"`
	UserName         string `bson:"userName"`
	Version          int    `bson:"v" auto:"version"`
	CreatedBy        string `bson:"createdBy" audit:"createdBy"`
	Untagged         int
}

func TestSchemaOfUser(t *testing.T) {
	s, err := model.For[*User]()
	require.NoError(t, err)
	assert.Equal(t, "users", s.Collection, "as mgm.CollName computes it")
	require.NotNil(t, s.ID)
	assert.Equal(t, "_id", s.ID.BSON)
	assert.Equal(t, []int{0, 0, 0}, s.ID.Index, "through DefaultModel and IDField")
	require.Len(t, s.Auto, 3)
	assert.Equal(t, model.UUID, s.Auto[0].Kind)
	assert.Equal(t, "users.longId", s.Auto[1].Seq, "default sequence name")
	assert.Equal(t, int64(500), s.Auto[1].Batch)
	assert.Equal(t, int64(1), s.Auto[1].Start)
	require.NotNil(t, s.Version)
	assert.Equal(t, "v", s.Version.BSON)
	require.Len(t, s.Audit, 1)
	assert.Equal(t, model.CreatedBy, s.Audit[0].Kind)
	assert.NotNil(t, s.FieldByBSON("untagged"), "the driver's default key is the lower-cased name")
	assert.NotNil(t, s.FieldByBSON("created_at"))
}

func TestSchemaIsCachedAndParsedOnce(t *testing.T) {
	type Fresh struct {
		mgm.DefaultModel `bson:",inline"`
		N                int64 `bson:"n" auto:"inc"`
	}
	var wg sync.WaitGroup
	got := make([]*model.Schema, 32)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := model.For[*Fresh]()
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		}()
	}
	wg.Wait()
	for _, s := range got {
		assert.Equal(t, got[0], s, "concurrent first use gives equal schemas")
	}
}

// TestSchemaCopiesShareNothing changes everything reachable from one
// schema Of returned; the next call returns the schema as parsed.
func TestSchemaCopiesShareNothing(t *testing.T) {
	type Shared struct {
		mgm.DefaultModel `bson:",inline"`
		Tenant           string    `bson:"tenant" policy:"tenant"`
		N                string    `bson:"n" auto:"inc,format=N-{seq:3},scope=tenant+region"`
		Region           string    `bson:"region"`
		V                int64     `bson:"v" auto:"version"`
		Email            string    `bson:"email" policy:"encrypt,eq"`
		Gone             time.Time `bson:"gone" policy:"softdelete,at"`
	}
	want, err := model.For[*Shared]()
	require.NoError(t, err)
	s, err := model.For[*Shared]()
	require.NoError(t, err)
	s.Collection, s.ID.BSON, s.Policies[0].BSON, s.Version.Seq = "x", "x", "x", "x"
	s.Auto[0].Format.Prefix, s.Auto[0].Index[0], s.Fields[0].Index[0] = "x", 9, 9
	s.Policies[1].Options[0], s.Policies[2].Index[0] = "x", 9
	s.Auto[0].Scope[0].BSON, s.Auto[0].Scope[0].Index[0] = "x", 9
	s.Fields, s.Auto, s.Audit, s.Policies, s.Version, s.ID = nil, nil, nil, nil, nil, nil
	again, err := model.For[*Shared]()
	require.NoError(t, err)
	assert.Equal(t, want, again)
	assert.Equal(t, "tenant", again.Policy("tenant")[0].BSON)
	assert.Equal(t, []string{"eq"}, again.Policy("encrypt")[0].Options)
	assert.Same(t, &again.Auto[1], again.Version, "Version points into the copy's Auto")
}

type withCollName struct {
	mgm.DefaultModel `bson:",inline"`
}

func (*withCollName) CollectionName() string { return "custom" }

// tagged has one field for each rule of the driver's bson tags.
type tagged struct {
	mgm.DefaultModel `bson:",inline"`
	Plain            int    // no tag: the lower-cased name
	Named            int    `bson:"n"`
	Empty            int    `bson:""`
	OmitEmpty        int    `bson:",omitempty"`
	KeyAndOpts       int    `bson:"ko,omitempty,minsize"`
	Skipped          int    `bson:"-"`
	Other            int    `json:"j"`
	Inner            inner  `bson:",inline"`
	Nested           inner  `bson:"nested"`
	Dash             string `bson:"-,omitempty"`
}

type inner struct {
	Deep int `bson:"deep"`
}

// The schema's BSON names are the keys the driver writes, for every kind of
// bson tag.
func TestFieldNamesAreTheDriversKeys(t *testing.T) {
	s, err := model.For[*tagged]()
	require.NoError(t, err)
	m := &tagged{Plain: 1, Named: 1, Empty: 1, OmitEmpty: 1, KeyAndOpts: 1, Skipped: 1, Other: 1, Inner: inner{1}, Nested: inner{1}, Dash: "x"}
	m.ID = primitive.NewObjectID() // omitempty
	raw, err := bsonio.Marshal(model.Registry(), m)
	require.NoError(t, err)
	elems, err := raw.Elements()
	require.NoError(t, err)
	var keys, names []string
	for _, e := range elems {
		keys = append(keys, e.Key())
	}
	for _, f := range s.Fields {
		names = append(names, f.BSON)
	}
	assert.Equal(t, keys, names)
	assert.Contains(t, names, "-")
}

func TestCollectionNameGetter(t *testing.T) {
	s, err := model.For[*withCollName]()
	require.NoError(t, err)
	assert.Equal(t, "custom", s.Collection)
}

// Bad models, one mistake each.
type (
	incOnString struct {
		mgm.DefaultModel `bson:",inline"`
		F                string `auto:"inc"`
	}
	incOnFloat struct {
		mgm.DefaultModel `bson:",inline"`
		F                float64 `auto:"inc"`
	}
	unknownOpt struct {
		mgm.DefaultModel `bson:",inline"`
		F                int64 `auto:"inc,step=2"`
	}
	unexported struct {
		mgm.DefaultModel `bson:",inline"`
		f                int64 `auto:"inc"`
	}
	both struct {
		mgm.DefaultModel `bson:",inline"`
		F                string `auto:"uuid,inc"`
	}
	v4v7 struct {
		mgm.DefaultModel `bson:",inline"`
		F                string `auto:"uuid,v4,v7"`
	}
	compactBytes struct {
		mgm.DefaultModel `bson:",inline"`
		F                uuid.UUID `auto:"uuid,compact"`
	}
	startZero struct {
		mgm.DefaultModel `bson:",inline"`
		F                int64 `auto:"inc,start=0"`
	}
	startTooBig struct {
		mgm.DefaultModel `bson:",inline"`
		F                int32 `auto:"inc,start=3000000000"`
	}
	dupOption struct {
		mgm.DefaultModel `bson:",inline"`
		F                int64 `auto:"inc,batch=5,batch=6"`
	}
	badFormat struct {
		mgm.DefaultModel `bson:",inline"`
		F                string `auto:"inc,format=ORD{date:2006-1-2}{seq:5}"`
	}
	formatOnInt struct {
		mgm.DefaultModel `bson:",inline"`
		F                int64 `auto:"inc,format=X{seq:3}"`
	}
	skipped struct {
		mgm.DefaultModel `bson:",inline"`
		F                int64 `bson:"-" auto:"inc"`
	}
	twoVersions struct {
		mgm.DefaultModel `bson:",inline"`
		A                int `auto:"version"`
		B                int `auto:"version"`
	}
	seqConflict struct {
		mgm.DefaultModel `bson:",inline"`
		A                int64 `auto:"inc,seq=s,start=5"`
		B                int64 `auto:"inc,seq=s,start=6"`
	}
	badAudit struct {
		mgm.DefaultModel `bson:",inline"`
		A                string `audit:"createdAt"`
	}
	scopeUnknown struct {
		mgm.DefaultModel `bson:",inline"`
		F                int64 `bson:"f" auto:"inc,scope=projectId"`
	}
	scopeFloat struct {
		mgm.DefaultModel `bson:",inline"`
		P                float64 `bson:"p"`
		F                int64   `bson:"f" auto:"inc,scope=p"`
	}
	scopeKey struct {
		mgm.DefaultModel `bson:",inline"`
		P                string `bson:"p" auto:"uuid"`
		F                int64  `bson:"f" auto:"inc,scope=p"`
	}
	scopeSelf struct {
		mgm.DefaultModel `bson:",inline"`
		F                int64 `bson:"f" auto:"inc,scope=f"`
	}
	scopeTwice struct {
		mgm.DefaultModel `bson:",inline"`
		P                string `bson:"p"`
		F                int64  `bson:"f" auto:"inc,scope=p+p"`
	}
	scopeEmpty struct {
		mgm.DefaultModel `bson:",inline"`
		P                string `bson:"p"`
		F                int64  `bson:"f" auto:"inc,scope=p+"`
	}
	scopeSeqConflict struct {
		mgm.DefaultModel `bson:",inline"`
		P                string `bson:"p"`
		A                int64  `bson:"a" auto:"inc,seq=s,scope=p"`
		B                int64  `bson:"b" auto:"inc,seq=s"`
	}
	notAModel struct{ N int }
)

func TestBadTags(t *testing.T) {
	cases := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[*incOnString](), "inc on a string field needs format="},
		{reflect.TypeFor[*incOnFloat](), "inc needs an int, int32, int64, uint32 or uint64 field, not float64"},
		{reflect.TypeFor[*unknownOpt](), `unknown option "step"`},
		{reflect.TypeFor[*unexported](), "field f"},
		{reflect.TypeFor[*both](), "uuid and inc on the same field"},
		{reflect.TypeFor[*v4v7](), "v4 and v7 conflict"},
		{reflect.TypeFor[*compactBytes](), "compact needs a string field"},
		{reflect.TypeFor[*startZero](), "start=0: want a whole number ≥ 1"},
		{reflect.TypeFor[*startTooBig](), "start=3000000000 does not fit in int32"},
		{reflect.TypeFor[*dupOption](), `option "batch" given twice`},
		{reflect.TypeFor[*badFormat](), "not of fixed width"},
		{reflect.TypeFor[*formatOnInt](), "format= needs a string field"},
		{reflect.TypeFor[*skipped](), `bson:"-"`},
		{reflect.TypeFor[*twoVersions](), "a second version field"},
		{reflect.TypeFor[*seqConflict](), `sequence "s" is also used by field A`},
		{reflect.TypeFor[*badAudit](), "needs a time.Time"},
		{reflect.TypeFor[*scopeUnknown](), `scope=projectId: the model has no field stored as "projectId"`},
		{reflect.TypeFor[*scopeFloat](), "scope=p: field P is a float64; a scope field is a string, an integer"},
		{reflect.TypeFor[*scopeKey](), "scope=p: field P has an auto tag"},
		{reflect.TypeFor[*scopeSelf](), "scope=f: a field cannot scope itself"},
		{reflect.TypeFor[*scopeTwice](), "scope=p+p: p named twice"},
		{reflect.TypeFor[*scopeEmpty](), "scope=p+: an empty field name"},
		{reflect.TypeFor[*scopeSeqConflict](), `sequence "s" is also used by field A`},
	}
	for _, c := range cases {
		t.Run(c.typ.Elem().Name(), func(t *testing.T) {
			_, err := model.Of(c.typ)
			require.ErrorIs(t, err, model.ErrInvalidTag)
			assert.ErrorContains(t, err, c.want)
			assert.ErrorContains(t, err, c.typ.String(), "the error names the type")
			var te *model.TagError
			require.ErrorAs(t, err, &te)
			assert.NotEmpty(t, te.Field)
		})
	}
	// The driver never stores an unexported field, which is why a tag on
	// one is refused.
	raw, err := bsonio.Marshal(model.Registry(), &unexported{f: 7})
	require.NoError(t, err)
	_, err = raw.LookupErr("f")
	assert.Error(t, err, "an unexported field is not encoded")

	_, err = model.Of(reflect.TypeFor[notAModel]())
	assert.ErrorIs(t, err, model.ErrUnsupportedType)
	_, err = model.Of(reflect.TypeFor[*notAModel]())
	assert.ErrorContains(t, err, "does not implement mgm.Model")
	_, err = model.Of(nil)
	assert.ErrorIs(t, err, model.ErrUnsupportedType)
}

// TestScopeFields: scope= names BSON fields, a policy's field (the
// tenant) like any other, resolved in the tag's order.
func TestScopeFields(t *testing.T) {
	type scoped struct {
		mgm.DefaultModel `bson:",inline"`
		Tenant           string             `bson:"tenant" policy:"tenant"`
		Project          primitive.ObjectID `bson:"projectId"`
		DocType          int32              `bson:"docType"`
		No               int64              `bson:"no" auto:"inc,scope=tenant+projectId+docType"`
		Ref              int64              `bson:"ref" auto:"inc,scope=docType"`
	}
	s, err := model.Of(reflect.TypeFor[*scoped]())
	require.NoError(t, err)
	no, ref := s.Auto[0], s.Auto[1]
	require.Len(t, no.Scope, 3)
	assert.Equal(t, "tenant", no.Scope[0].BSON)
	assert.Equal(t, "projectId", no.Scope[1].BSON)
	assert.Equal(t, "DocType", no.Scope[2].Name)
	require.Len(t, ref.Scope, 1)
	assert.Equal(t, "docType", ref.Scope[0].BSON)
}

// TestKindFirst: an option written without its kind, or before it, is
// refused with the tag to write instead.
func TestKindFirst(t *testing.T) {
	for tag, want := range map[string]string{
		"format=INV-{seq:4}":      `write auto:"inc,format=INV-{seq:4}"`,
		"seq=orders,start=5":      `write auto:"inc,seq=orders,start=5"`,
		"scope=tenant,inc":        `write auto:"inc,scope=tenant"`,
		"v7,compact":              `write auto:"uuid,v7,compact"`,
		"incr":                    `unknown kind "incr"; want "inc", "uuid" or "version" first`,
		"start=5,format=X{seq:1}": `write auto:"inc,start=5,format=X{seq:1}"`,
	} {
		_, err := model.ParseAuto(tag, reflect.TypeFor[string]())
		require.ErrorIs(t, err, model.ErrInvalidTag, tag)
		assert.ErrorContains(t, err, want, tag)
	}
}

func TestParseAutoGoodTags(t *testing.T) {
	a, err := model.ParseAuto("inc, seq=orders, start=1000, batch=1", reflect.TypeFor[uint32]())
	require.NoError(t, err)
	assert.Equal(t, "orders", a.Seq)
	assert.Equal(t, int64(1000), a.Start)
	assert.Equal(t, int64(1), a.Batch)
	assert.Equal(t, uint64(1<<32-1), a.Max)
	a, err = model.ParseAuto("uuid,v7,compact", reflect.TypeFor[string]())
	require.NoError(t, err)
	assert.True(t, a.V7 && a.Compact)
	a, err = model.ParseAuto("inc,format=ORD{date:060102}{seq:5}", reflect.TypeFor[string]())
	require.NoError(t, err)
	assert.Equal(t, "ORD{date:060102}{seq:5}", a.Format.String())
}

func TestFormat(t *testing.T) {
	f, err := model.ParseFormat("ORD{date:060102}{seq:5}")
	require.NoError(t, err)
	day := time.Date(2026, 11, 30, 12, 0, 0, 0, time.FixedZone("x", 13*3600))
	p := f.Period(day)
	assert.Equal(t, "261129", p, "periods are in UTC")
	assert.Equal(t, "ORD26112900042", string(f.Append(nil, p, 42)))
	assert.Equal(t, "ORD261129123456", string(f.Append(nil, p, 123456)), "wider numbers widen")

	for _, bad := range []string{"ORD", "ORD{seq:0}", "ORD{seq:x}", "{date:}{seq:3}", "{date:abc}{seq:3}", "A}{seq:2}", "{date:2006{seq:2}",
		"{seq:3}{date:06}", "{date:06}{date:01}{seq:2}", "A{seq:2}{seq:2}", "A{num:2}", "A{seq:2}B}", "{date:Monday}{seq:2}", "{date:January}-{seq:2}"} {
		_, err := model.ParseFormat(bad)
		assert.ErrorContains(t, err, `model: format "`+bad+`": `, "the error names its package and quotes the whole format")
	}
}

// TestFormatLiteralText: literal text may stand between the date and the
// number and after the number, and is kept in String and Append.
func TestFormatLiteralText(t *testing.T) {
	day := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for tmpl, want := range map[string][2]string{
		"ORD-{date:060102}-{seq:5}": {"ORD-261130-00042", "ORD-261130-1234567"},
		"INV{seq:4}-EU":             {"INV0042-EU", "INV1234567-EU"},
		"{date:2006}/{seq:3}.pdf":   {"2026/042.pdf", "2026/1234567.pdf"},
		"#{seq:1}#":                 {"#42#", "#1234567#"},
	} {
		f, err := model.ParseFormat(tmpl)
		require.NoError(t, err, tmpl)
		assert.Equal(t, tmpl, f.String())
		p := f.Period(day)
		assert.Equal(t, want[0], string(f.Append(nil, p, 42)), tmpl)
		assert.Equal(t, want[1], string(f.Append(nil, p, 1234567)), tmpl)
		a, err := model.ParseAuto("inc,format="+tmpl, reflect.TypeFor[string]())
		require.NoError(t, err, tmpl)
		assert.Equal(t, tmpl, a.Format.String())
	}
}

// FuzzParseFormat: no template panics the parser; an accepted one prints
// back as given, and gives distinct numbers for distinct values in one
// period and across two.
func FuzzParseFormat(f *testing.F) {
	for _, seed := range []string{"ORD{date:060102}{seq:5}", "ORD-{date:060102}-{seq:5}", "INV{seq:4}-EU", "{seq:1}", "{seq:3}{date:06}", "A}{seq:2}", "{date:15}1{seq:1}1"} {
		f.Add(seed)
	}
	d1, d2 := time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, tmpl string) {
		fm, err := model.ParseFormat(tmpl)
		if err != nil {
			return
		}
		if fm.String() != tmpl {
			t.Fatalf("%q prints as %q", tmpl, fm.String())
		}
		seen := map[string]string{}
		for _, p := range []string{fm.Period(d1), fm.Period(d2)} {
			for _, n := range []int64{1, 9, 10, 11, 99, 100, 101, 1000, 12345, 123456789} {
				s := string(fm.Append(nil, p, n))
				key := p + "/" + strconv.FormatInt(n, 10)
				if other, ok := seen[s]; ok && other != key {
					t.Fatalf("%q gives %q for both %s and %s", tmpl, s, other, key)
				}
				seen[s] = key
			}
		}
	})
}

func TestUUIDCodec(t *testing.T) {
	type doc struct {
		U uuid.UUID  `bson:"u"`
		P *uuid.UUID `bson:"p"`
	}
	u := uuid.New()
	raw, err := bsonio.Marshal(model.Registry(), doc{U: u, P: &u})
	require.NoError(t, err)
	sub, data := bson.Raw(raw).Lookup("u").Binary()
	assert.Equal(t, bson.TypeBinaryUUID, sub)
	assert.Equal(t, u[:], data)
	var back doc
	require.NoError(t, bsonio.Unmarshal(model.Registry(), raw, &back))
	assert.Equal(t, u, back.U)
	assert.Equal(t, u, *back.P)

	// Subtype 0, as the driver's default wrote it, and strings read too.
	old, _ := bson.Marshal(bson.M{"u": primitive.Binary{Subtype: 0, Data: u[:]}})
	require.NoError(t, bsonio.Unmarshal(model.Registry(), old, &back))
	assert.Equal(t, u, back.U)
	str, _ := bson.Marshal(bson.M{"u": u.String()})
	require.NoError(t, bsonio.Unmarshal(model.Registry(), str, &back))
	assert.Equal(t, u, back.U)
	short, _ := bson.Marshal(bson.M{"u": primitive.Binary{Subtype: 4, Data: []byte{1, 2}}})
	assert.ErrorContains(t, bsonio.Unmarshal(model.Registry(), short, &back), "2 bytes")
}

// FuzzParseAuto: no tag, however malformed, panics the parser, and every
// accepted tag is self-consistent.
func FuzzParseAuto(f *testing.F) {
	for _, seed := range []string{
		"inc", "uuid", "version", "inc,seq=a,start=5,batch=10", "uuid,v7,compact",
		"inc,format=ORD{date:060102}{seq:5}", "inc,format={seq:1}", "", ",", "inc,,",
		"inc,start=", "inc,start=-1", "inc,batch=99999999999999999999", "uuid,v4,v7",
		"inc,uuid", "inc,format=A{date:}{seq:3}", "inc,seq=#", "inc,format={date:15}{seq:19}",
	} {
		f.Add(seed)
	}
	types := []reflect.Type{
		reflect.TypeFor[int64](), reflect.TypeFor[int32](), reflect.TypeFor[uint64](),
		reflect.TypeFor[string](), reflect.TypeFor[uuid.UUID](), reflect.TypeFor[[16]byte](), reflect.TypeFor[float64](),
	}
	f.Fuzz(func(t *testing.T, tag string) {
		for _, typ := range types {
			a, err := model.ParseAuto(tag, typ)
			if err != nil {
				if !strings.Contains(err.Error(), "Field") {
					t.Fatalf("error does not name the field: %v", err)
				}
				continue
			}
			switch a.Kind {
			case model.Inc:
				if a.Start < 1 || a.Batch < 0 || a.Batch > model.MaxBatch {
					t.Fatalf("accepted %q with start %d batch %d", tag, a.Start, a.Batch)
				}
				if (a.Format != nil) != (typ.Kind() == reflect.String) {
					t.Fatalf("accepted %q on %v", tag, typ)
				}
			case model.UUID:
				if a.Compact && typ.Kind() != reflect.String {
					t.Fatalf("accepted compact on %v", typ)
				}
			case model.Version:
			default:
				t.Fatalf("accepted %q with kind %v", tag, a.Kind)
			}
		}
	})
}

func BenchmarkSchemaCached(b *testing.B) {
	t := reflect.TypeFor[*User]()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := model.Of(t); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConvertErrorsNameThePackage: Convert's refusals name the package,
// the model type and the field.
func TestConvertErrorsNameThePackage(t *testing.T) {
	s, err := model.For[*User]()
	require.NoError(t, err)
	f := s.FieldByBSON("userName")
	require.NotNil(t, f)
	_, err = s.Convert(f, 4.2)
	assert.EqualError(t, err, "model: *model_test.User field UserName: a string field cannot hold a float64")
	_, err = s.Convert(f, nil)
	assert.EqualError(t, err, "model: *model_test.User field UserName: want a string, have nil")
	v, err := s.Convert(f, "zwt")
	require.NoError(t, err)
	assert.Equal(t, "zwt", v.String())
}
