package events

import "context"

// InterceptorFunc adapts an ordinary function to an Interceptor, as
// http.HandlerFunc adapts one to an http.Handler, so that registering an
// interceptor takes one line:
//
//	bus.Register(events.InterceptorFunc(func(ctx context.Context, o *events.Operation, next func(context.Context) error) error {
//		start := time.Now()
//		err := next(ctx)
//		slog.InfoContext(ctx, "mongo", "method", o.Method, "took", time.Since(start), "err", err)
//		return err
//	}), events.ForModel[*User]())
//
// It is also a Listener that handles no events (EventTypes returns none),
// so that Register accepts it; ForModel and ForType restrict it to a model
// type as they do any interceptor, and On would only add events that it
// ignores.
type InterceptorFunc func(ctx context.Context, o *Operation, next func(context.Context) error) error

// Intercept calls f(ctx, o, next).
func (f InterceptorFunc) Intercept(ctx context.Context, o *Operation, next func(context.Context) error) error {
	return f(ctx, o, next)
}

// HandleEvent does nothing: an InterceptorFunc handles no events.
func (InterceptorFunc) HandleEvent(context.Context, *Event) error { return nil }

// EventTypes returns none, so that the bus never calls HandleEvent.
func (InterceptorFunc) EventTypes() []Type { return nil }
