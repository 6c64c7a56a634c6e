package repo

import (
	"context"

	"github.com/mgmevents/mgmevents/events"
)

// Interceptors (events.Interceptor) wrap every exported method that
// touches the database. The method asks first whether there are any, and
// without them runs its body as it is, at no cost; with them it runs the
// body inside Bus.Intercept. A method is wrapped so:
//
//	func (r *Repository[T]) X(ctx context.Context, a A) (R, error) {
//		if o := r.operation("X", events.OpX); o != nil {
//			return intercept(ctx, r.bus, o, func(ctx context.Context) (R, error) { return r.x(ctx, o, a) })
//		}
//		return r.x(ctx, nil, a)
//	}
//
// where x is the body, which records in o, when it is not nil, what the
// operation did (the counts of events.Operation). The closure is built
// only when o is not nil: built on every call, it would cost an
// allocation, and so would the variables it captures.

// operation returns the Operation of a call of method, or nil when no
// interceptor wraps the repository's operations.
func (r *Repository[T]) operation(method string, op events.Op) *events.Operation {
	if !r.bus.Intercepts(r.schema.Type) {
		return nil
	}
	return &events.Operation{Method: method, Op: op, Database: r.coll.Database().Name(),
		Collection: r.coll.Name(), ModelType: r.schema.Type}
}

// intercept runs f, operation o, inside the bus's interceptors, and
// returns f's result with the error the interceptors leave.
func intercept[R any](ctx context.Context, bus *events.Bus, o *events.Operation, f func(context.Context) (R, error)) (R, error) {
	var res R
	err := bus.Intercept(ctx, o, func(ctx context.Context) error {
		var err error
		res, err = f(ctx)
		return err
	})
	return res, err
}
