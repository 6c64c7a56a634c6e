package repo

import (
	"context"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// The bodies of Insert and FindOne, without the check for interceptors,
// so that a test can show the check costs nothing.

func (r *Repository[T]) InsertBody(ctx context.Context, m T) error { return r.insert(ctx, nil, m) }

func (r *Repository[T]) FindOneBody(ctx context.Context, filter any) (T, error) {
	return r.findFirst(ctx, nil, filter, nil)
}

// WatchChanges runs what Watch and ChangeStream.Next run around the
// server, for tests on a server without change streams: BeforeQuery for
// pipeline, then the decoding of each change event's full document. It
// returns the pipeline Watch would send and the models.
func (r *Repository[T]) WatchChanges(ctx context.Context, pipeline any, changes ...bson.Raw) (any, []T, error) {
	e, sent, err := r.watchQuery(ctx, pipeline, nil)
	if err != nil {
		return nil, nil, r.wrap("Watch", err)
	}
	defer release(e)
	var out []T
	for _, c := range changes {
		m, err := r.change(ctx, e, c)
		if err != nil {
			return sent, out, r.wrap("Watch", err)
		}
		out = append(out, m)
	}
	return sent, out, nil
}

// StreamWithout returns a ChangeStream after what Watch publishes, over the
// driver's zero stream, which has no changes and which Close closes at
// once: for tests on a server without change streams.
func (r *Repository[T]) StreamWithout(ctx context.Context, pipeline any) (*ChangeStream[T], error) {
	e, _, err := r.watchQuery(ctx, pipeline, nil)
	if err != nil {
		return nil, r.wrap("Watch", err)
	}
	return &ChangeStream[T]{r: r, cs: &mongo.ChangeStream{}, e: e}, nil
}

// NextOf runs what Next runs for the change event raw once the driver has
// read it.
func (s *ChangeStream[T]) NextOf(ctx context.Context, raw bson.Raw) bool {
	s.m, s.err = s.r.change(ctx, s.e, raw)
	return s.err == nil
}
