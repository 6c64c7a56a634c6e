package model_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

type indexed struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string    `bson:"email" index:"unique"`
	Total            int       `bson:"total" index:"desc"`
	Day              time.Time `bson:"day" index:"name=byCustomer,order=2,desc"`
	Customer         string    `bson:"customer" index:"name=byCustomer,order=1,unique"`
	Seen             time.Time `bson:"seen" index:"ttl=1h"`
}

func (*indexed) Indexes() []mongo.IndexModel {
	return []mongo.IndexModel{{Keys: bson.D{{Key: "tags", Value: 1}},
		Options: options.Index().SetPartialFilterExpression(bson.D{{Key: "total", Value: bson.D{{Key: "$gt", Value: 0}}}})}}
}

func TestIndexTags(t *testing.T) {
	s, err := model.For[*indexed]()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range s.Indexes {
		ix := s.Indexes[i]
		ix.Source = ""
		got = append(got, ix.String())
	}
	want := []string{
		"email_1 {email: 1} unique",
		"total_-1 {total: -1}",
		"byCustomer {customer: 1, day: -1} unique",
		"seen_1 {seen: 1} expireAfterSeconds=3600",
		`tags_1 {tags: 1} partialFilterExpression={"total": {"$gt": {"$numberInt":"0"}}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("indexes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if src := s.Indexes[2].Source; src != "field Customer `index:\"name=byCustomer,order=1,unique\"`, field Day `index:\"name=byCustomer,order=2,desc\"`" {
		t.Errorf("source %q", src)
	}
	m := s.Indexes[3].Model()
	if *m.Options.Name != "seen_1" || *m.Options.ExpireAfterSeconds != 3600 {
		t.Errorf("Model() = %+v", m.Options)
	}
}

type badTTL struct {
	mgm.DefaultModel `bson:",inline"`
	N                int `bson:"n" index:"ttl=1h"`
}
type badOption struct {
	mgm.DefaultModel `bson:",inline"`
	N                int `bson:"n" index:"uniq"`
}
type badOrder struct {
	mgm.DefaultModel `bson:",inline"`
	A                int `bson:"a" index:"name=ab,order=1"`
	B                int `bson:"b" index:"name=ab"`
}
type badCompoundTTL struct {
	mgm.DefaultModel `bson:",inline"`
	A                time.Time `bson:"a" index:"name=ab,ttl=1h"`
	B                int       `bson:"b" index:"name=ab"`
}
type badUnexported struct {
	mgm.DefaultModel `bson:",inline"`
	n                int `index:""`
}
type badAutoKey struct {
	mgm.DefaultModel `bson:",inline"`
	No               int64 `bson:"no" auto:"inc" index:""`
}
type badSameName struct {
	mgm.DefaultModel `bson:",inline"`
	A                int `bson:"a" index:"unique"`
}

func (*badSameName) Indexes() []mongo.IndexModel {
	return []mongo.IndexModel{{Keys: bson.D{{Key: "b", Value: 1}}, Options: options.Index().SetName("a_1")}}
}

type badMapKeys struct{ mgm.DefaultModel }

func (*badMapKeys) Indexes() []mongo.IndexModel {
	return []mongo.IndexModel{{Keys: bson.M{"a": 1, "b": 1}}}
}

func TestIndexTagErrors(t *testing.T) {
	for _, tc := range []struct {
		schema func() (*model.Schema, error)
		is     error
		want   []string
	}{
		{model.For[*badTTL], model.ErrInvalidTag, []string{"badTTL field N `index:\"ttl=1h\"`", "needs a time.Time"}},
		{model.For[*badOption], model.ErrInvalidTag, []string{"field N", `unknown option "uniq"`}},
		{model.For[*badOrder], model.ErrInvalidTag, []string{"field A", "order= on every field of it, or on none"}},
		{model.For[*badCompoundTTL], model.ErrInvalidTag, []string{"field A", "a TTL index has a single field"}},
		{model.For[*badUnexported], model.ErrInvalidTag, []string{"field n", "unexported"}},
		{model.For[*badAutoKey], model.ErrInvalidIndex, []string{"badAutoKey", "field No `index:\"\"`", "AutoKeys makes the unique index {no: 1}"}},
		{model.For[*badSameName], model.ErrInvalidIndex, []string{"badSameName.Indexes()[0]", "also declared by field A"}},
		{model.For[*badMapKeys], model.ErrInvalidIndex, []string{"Indexes()[0]", "use a bson.D"}},
	} {
		_, err := tc.schema()
		if !errors.Is(err, tc.is) {
			t.Errorf("err = %v, want %v", err, tc.is)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}
}

func TestIndexesAreCopied(t *testing.T) {
	s, _ := model.For[*indexed]()
	s.Indexes[0].Keys[0].Key = "changed"
	s.Indexes[3].ExpireAfterSeconds = nil
	again, _ := model.For[*indexed]()
	if again.Indexes[0].Keys[0].Key != "email" || again.Indexes[3].ExpireAfterSeconds == nil {
		t.Fatal("changing one schema's indexes changed the cache")
	}
}

var _ = badUnexported{}.n // read only through reflection
