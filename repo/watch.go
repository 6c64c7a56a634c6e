package repo

import (
	"context"
	"fmt"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Watch opens a change stream on the collection, as the driver's Watch
// does (it needs a MongoDB replica set or sharded cluster; the embedded
// FerretDB has none). pipeline (nil is empty) sees change events, in which
// a stored document's fields are under "fullDocument.".
//
// It publishes BeforeQuery with Event.Pipeline, which the policies confine
// as they do an Aggregate's: Tenancy and SoftDelete put a $match on
// fullDocument's tenant and mark first, so that a change without a full
// document of the tenant (a delete; an update, unless
// options.ChangeStream().SetFullDocument(options.UpdateLookup)) is not
// delivered; Encryption refuses a pipeline that names an encrypted field.
// A listener that sets Event.Filter instead, which a change stream has
// not, gets the operation refused: it does not know how to confine it.
// Then, for each change that carries a full document, the stream publishes
// AfterLoad and AfterConvert, as a read does: Encryption decrypts it.
//
// It refuses ChangeStreamOptions.Custom and CustomPipeline with
// ErrInvalidArgument, before anything is published or sent: the driver
// copies their raw fields into the command unread, where a collation or
// a second pipeline would pass every policy.
//
// With interceptors, the operation ends when Watch returns.
func (r *Repository[T]) Watch(ctx context.Context, pipeline any, opts ...*options.ChangeStreamOptions) (*ChangeStream[T], error) {
	if o := r.operation("Watch", events.OpWatch); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (*ChangeStream[T], error) { return r.watch(ctx, pipeline, opts) })
	}
	return r.watch(ctx, pipeline, opts)
}

func (r *Repository[T]) watch(ctx context.Context, pipeline any, opts []*options.ChangeStreamOptions) (*ChangeStream[T], error) {
	opts = ownOptions(opts)
	const method = "Watch"
	e, pipeline, err := r.watchQuery(ctx, pipeline, opts)
	if err != nil {
		return nil, r.wrap(method, err)
	}
	cs, err := r.coll.Watch(ctx, pipeline, opts...)
	if err != nil {
		release(e)
		return nil, r.wrap(method, err)
	}
	return &ChangeStream[T]{r: r, cs: cs, e: e}, nil
}

// watchQuery publishes Watch's BeforeQuery, and returns its event, for
// the changes to come, and the pipeline to send.
func (r *Repository[T]) watchQuery(ctx context.Context, pipeline any, opts []*options.ChangeStreamOptions) (*events.Event, any, error) {
	if err := refuseChangeStreamCustom(opts); err != nil {
		return nil, nil, err
	}
	e := r.event(ctx, events.OpWatch)
	describe(e, opts, nil, nil, func(o *options.ChangeStreamOptions) *options.Collation { return o.Collation })
	pipeline, err := r.pipelineQuery(ctx, e, pipeline)
	if err != nil {
		release(e)
		return nil, nil, err
	}
	return e, pipeline, nil
}

// pipelineQuery publishes BeforeQuery for the pipeline of an Aggregate or
// a Watch, and returns the pipeline its listeners left, which is what the
// operation sends. A listener that set Event.Filter, which these
// operations do not send, would believe it confined what it did not: the
// operation is refused. A nil e publishes nothing. A nil pipeline is an
// empty one.
func (r *Repository[T]) pipelineQuery(ctx context.Context, e *events.Event, pipeline any) (any, error) {
	if pipeline == nil {
		pipeline = []bson.D{}
	}
	pipeline, err := r.canon(pipeline)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return pipeline, r.checkReaches(pipeline)
	}
	e.Pipeline = pipeline
	if err := r.publish(ctx, e, events.BeforeQuery); err != nil {
		return nil, err
	}
	if e.Filter != nil {
		return nil, fmt.Errorf("a BeforeQuery listener set Event.Filter on %v, whose query is Event.Pipeline: the listener cannot confine it, so it is refused: %w", e.Op, ErrInvalidArgument)
	}
	if e.Pipeline == nil {
		return nil, fmt.Errorf("a BeforeQuery listener left a nil pipeline: %w", ErrInvalidArgument)
	}
	return e.Pipeline, r.checkReaches(e.Pipeline)
}

// ChangeStream is a change stream of a repository's collection that
// publishes AfterLoad and AfterConvert for the full document of each
// change, as a read does. Get one from Watch, and Close it when done.
type ChangeStream[T mgm.Model] struct {
	r   *Repository[T]
	cs  *mongo.ChangeStream
	e   *events.Event
	m   T
	err error
}

// Next waits for the next change and reports whether there was one; after
// false, check Err. When the change carries a full document, Next
// publishes AfterLoad, decodes it, and publishes AfterConvert; Model then
// returns it.
func (s *ChangeStream[T]) Next(ctx context.Context) bool {
	if s.err != nil || !s.cs.Next(ctx) {
		return false
	}
	s.m, s.err = s.r.change(ctx, s.e, s.cs.Current)
	return s.err == nil
}

// Model returns the full document of the change Next read, decoded, or the
// zero T when the change carries none.
func (s *ChangeStream[T]) Model() T { return s.m }

// Current returns the change event Next read, as the server sent it: its
// full document as stored (encrypted fields as ciphertexts); Model is the
// document as listeners left it.
func (s *ChangeStream[T]) Current() bson.Raw { return s.cs.Current }

// OperationType returns the kind of the change Next read: "insert",
// "update", "replace", "delete", ...
func (s *ChangeStream[T]) OperationType() string {
	t, _ := s.cs.Current.Lookup("operationType").StringValueOK()
	return t
}

// ResumeToken returns the token to resume the stream after the last
// change read (options.ChangeStream().SetResumeAfter).
func (s *ChangeStream[T]) ResumeToken() bson.Raw { return s.cs.ResumeToken() }

// Err returns the first error of the stream or of a listener.
func (s *ChangeStream[T]) Err() error {
	err := s.err
	if err == nil {
		err = s.cs.Err()
	}
	if err != nil {
		return s.r.wrap("Watch", err)
	}
	return nil
}

// Close closes the stream. Its event is not given back to the pool, as a
// Cursor's is not: a Next still running in another goroutine would
// publish to an event another operation had taken.
func (s *ChangeStream[T]) Close(ctx context.Context) error { return s.cs.Close(ctx) }

// change decodes the full document of the change event raw, after AfterLoad
// and before AfterConvert, or returns the zero T when it has none.
func (r *Repository[T]) change(ctx context.Context, e *events.Event, raw bson.Raw) (T, error) {
	doc, ok := raw.Lookup("fullDocument").DocumentOK()
	if !ok {
		var zero T
		return zero, nil
	}
	return r.decode(ctx, e, doc)
}
