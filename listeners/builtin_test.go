package listeners_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

type Person struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
	Email            string `bson:"email"`
}

func TestLoggingRecordsEachEvent(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(listeners.NewLogging(logger, listeners.WithLevel(slog.LevelInfo)))
	people, err := repo.New[*Person](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	p := &Person{Name: "zwt", Email: "zwt@example.com"}
	require.NoError(t, people.Insert(ctx, p))
	_, err = people.FindByID(ctx, p.ID)
	require.NoError(t, err)
	require.NoError(t, people.Delete(ctx, p))

	var records []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		records = append(records, r)
	}
	var got []string
	for _, r := range records {
		got = append(got, r["event"].(string))
		assert.Equal(t, "INFO", r["level"])
		assert.Equal(t, "people", r["collection"], "mgm pluralises Person")
		assert.Equal(t, "*listeners_test.Person", r["model"])
		if r["event"] != "BeforeQuery" { // before the query, there is no document yet
			assert.Contains(t, r["id"], p.ID.Hex(), "every record names the document")
		}
		assert.NotContains(t, r, "document", "no contents unless asked")
	}
	assert.Equal(t, []string{"BeforeConvert", "BeforeSave", "AfterSave", "BeforeQuery", "AfterLoad", "AfterConvert", "BeforeQuery", "BeforeDelete", "AfterDelete"}, got)
	assert.NotContains(t, buf.String(), "zwt@example.com", "personal data stays out of the log")

	buf.Reset()
	bus.Register(listeners.NewLogging(logger, listeners.WithDocuments(), listeners.WithLevel(slog.LevelWarn)), events.On(events.BeforeSave))
	require.NoError(t, people.Insert(ctx, &Person{Name: "opted in", Email: "in@example.com"}))
	assert.Contains(t, buf.String(), "in@example.com", "contents when opted in")
	assert.Contains(t, buf.String(), `"level":"WARN"`)

	buf.Reset()
	quiet := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
	bus2 := events.NewBus()
	bus2.Register(listeners.NewLogging(quiet))
	people2, _ := repo.New[*Person](bus2, repo.WithDatabase(db))
	require.NoError(t, people2.Insert(ctx, &Person{}))
	assert.Empty(t, buf.String(), "below the handler's level, nothing")
}

// Signup validates itself.
type Signup struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
	Age              int    `bson:"age"`
}

func (s *Signup) Validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, listeners.FieldError{Field: "Name", Reason: "is required"})
	}
	if s.Age < 18 {
		errs = append(errs, listeners.FieldError{Field: "Age", Reason: "must be at least 18"})
	}
	return errors.Join(errs...)
}

// fakeFieldError and fakeErrors have the shape of go-playground/validator's
// FieldError and ValidationErrors, without the dependency.
type fakeFieldError struct{ field, tag string }

func (f fakeFieldError) Field() string { return f.field }
func (f fakeFieldError) Tag() string   { return f.tag }
func (f fakeFieldError) Error() string { return "Key: '" + f.field + "' failed on " + f.tag }

type fakeErrors []fakeFieldError

func (f fakeErrors) Error() string { return "validation errors" }

type emailRequired struct{}

func (emailRequired) Struct(s any) error {
	if p, ok := s.(*Person); ok && !strings.Contains(p.Email, "@") {
		return fakeErrors{{field: "Email", tag: "email"}}
	}
	return nil
}

func TestValidationAbortsTheWrite(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(listeners.NewValidation(emailRequired{}))
	signups, err := repo.New[*Signup](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	people, err := repo.New[*Person](bus, repo.WithDatabase(db))
	require.NoError(t, err)

	err = signups.Insert(ctx, &Signup{Age: 12})
	require.ErrorIs(t, err, listeners.ErrValidation)
	require.ErrorIs(t, err, events.ErrAborted)
	var ve *listeners.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []listeners.FieldError{{Field: "Name", Reason: "is required"}, {Field: "Age", Reason: "must be at least 18"}}, ve.Fields)
	assert.ErrorContains(t, err, "Name: is required; Age: must be at least 18")

	err = people.InsertMany(ctx, []*Person{{Email: "ok@x"}, {Email: "nope"}})
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "Email", ve.Fields[0].Field)
	assert.Contains(t, ve.Fields[0].Reason, "'email'")

	n, _ := db.Collection("signups").CountDocuments(ctx, bson.M{})
	assert.Zero(t, n, "nothing written")
	n, _ = db.Collection("people").CountDocuments(ctx, bson.M{})
	assert.Zero(t, n, "nothing written, not even the valid model of the batch")

	require.NoError(t, signups.Insert(ctx, &Signup{Name: "zwt", Age: 30}))
	require.NoError(t, people.Insert(ctx, &Person{Email: "a@b"}))
}

type Doc struct {
	mgm.IDField `bson:",inline"`
	Title       string    `bson:"title"`
	CreatedAt   time.Time `bson:"createdAt" audit:"createdAt"`
	UpdatedAt   time.Time `bson:"updatedAt" audit:"updatedAt"`
	CreatedBy   string    `bson:"createdBy" audit:"createdBy"`
	UpdatedBy   string    `bson:"updatedBy" audit:"updatedBy"`
}

type userKey struct{}

func TestAuditingSurvivesUpdates(t *testing.T) {
	db := srv.Database(t)
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	audit := listeners.NewAuditing(listeners.WithAuditor(func(ctx context.Context) (any, error) { return ctx.Value(userKey{}), nil }),
		listeners.WithClock(func() time.Time { return now }))
	bus := events.NewBus()
	bus.Register(audit)
	docs, err := repo.New[*Doc](bus, repo.WithDatabase(db))
	require.NoError(t, err)

	alice := context.WithValue(ctx, userKey{}, "alice")
	d := &Doc{Title: "v1"}
	require.NoError(t, docs.Insert(alice, d))
	assert.Equal(t, now, d.CreatedAt)
	assert.Equal(t, "alice", d.CreatedBy)
	assert.Equal(t, "alice", d.UpdatedBy)

	// Bob updates with a model he built himself: its created fields are
	// zero, and must not overwrite the stored ones.
	now = now.Add(time.Hour)
	bob := context.WithValue(ctx, userKey{}, "bob")
	require.NoError(t, docs.Update(bob, &Doc{IDField: d.IDField, Title: "v2"}))
	now = now.Add(time.Hour)
	require.NoError(t, docs.Save(bob, &Doc{IDField: d.IDField, Title: "v3"}))

	stored, err := docs.FindByID(ctx, d.ID)
	require.NoError(t, err)
	assert.Equal(t, "v3", stored.Title)
	assert.Equal(t, "alice", stored.CreatedBy, "createdBy survives updates")
	assert.True(t, stored.CreatedAt.Equal(d.CreatedAt), "createdAt survives updates: %v", stored.CreatedAt)
	assert.Equal(t, "bob", stored.UpdatedBy)
	assert.True(t, stored.UpdatedAt.Equal(now))

	wrong := listeners.NewAuditing(listeners.WithAuditor(func(context.Context) (any, error) { return 42.5, nil }))
	bus2 := events.NewBus()
	bus2.Register(wrong)
	docs2, _ := repo.New[*Doc](bus2, repo.WithDatabase(db))
	err = docs2.Insert(ctx, &Doc{})
	assert.ErrorContains(t, err, "field CreatedBy: a string field cannot hold a float64")
}
