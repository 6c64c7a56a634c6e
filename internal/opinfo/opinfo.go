// Package opinfo describes repository operations' errors and listeners
// for tracing and logs, by what they are, never by their text: an error's
// text may quote a value (a duplicate key error quotes the key), and
// nothing personal or encrypted may reach a trace or a log unasked.
package opinfo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"

	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/mongo"
)

// Kinded is an error that names its kind, as ErrorType reports it, by a
// method: repo's ErrVersionConflict ("version_conflict"), ErrInvalidArgument
// and ErrNilModel ("invalid_argument"). Errors are classified by it, so
// that this package imports nothing of the packages whose errors it reads.
type Kinded interface {
	error
	ErrorType() string
}

// ErrorType classifies err for OpenTelemetry's error.type: "vetoed",
// "listener", "panic", "timeout", "canceled", "not_found", the kind of a
// Kinded error in err's chain ("version_conflict", "invalid_argument"),
// "duplicate_key", "network", "server_error_<code>" or "_OTHER".
func ErrorType(err error) string {
	var le *events.ListenerError
	var kinded Kinded
	switch {
	case errors.As(err, &le):
		if le.Type.Before() {
			return "vetoed"
		}
		return "listener"
	case errors.Is(err, events.ErrPanic):
		return "panic"
	case errors.Is(err, context.DeadlineExceeded) || mongo.IsTimeout(err):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, mongo.ErrNoDocuments):
		return "not_found"
	case errors.As(err, &kinded) && kinded.ErrorType() != "":
		return kinded.ErrorType()
	case mongo.IsDuplicateKeyError(err):
		return "duplicate_key"
	case mongo.IsNetworkError(err):
		return "network"
	}
	if code, ok := serverCode(err); ok {
		return "server_error_" + strconv.Itoa(code)
	}
	return "_OTHER"
}

// Describe says what err is, as ErrorType does, with the listener and the
// event of a *events.ListenerError and the server's code and code name.
func Describe(err error) string {
	var le *events.ListenerError
	if errors.As(err, &le) {
		how := "aborted"
		if !le.Type.Before() {
			how = "failed after"
		}
		return fmt.Sprintf("%v listener %s %s %v (%s)", le.Type, ListenerName(le.Listener), how, le.Op, errorTypeOfCause(le.Err))
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return fmt.Sprintf("%s: server error %d %s", ErrorType(err), ce.Code, ce.Name)
	}
	if code, ok := serverCode(err); ok {
		return fmt.Sprintf("%s: server error %d", ErrorType(err), code)
	}
	return ErrorType(err)
}

// errorTypeOfCause classifies a listener's own error.
func errorTypeOfCause(err error) string {
	if err == nil {
		return "_OTHER"
	}
	return ErrorType(err)
}

// serverCode returns the code of the server error in err's chain.
func serverCode(err error) (int, bool) {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return int(ce.Code), true
	}
	var we mongo.WriteException
	if errors.As(err, &we) {
		if len(we.WriteErrors) > 0 {
			return we.WriteErrors[0].Code, true
		}
		if we.WriteConcernError != nil {
			return we.WriteConcernError.Code, true
		}
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) {
		if len(bwe.WriteErrors) > 0 {
			return bwe.WriteErrors[0].Code, true
		}
		if bwe.WriteConcernError != nil {
			return bwe.WriteConcernError.Code, true
		}
	}
	return 0, false
}

// ListenerName names l by its type, or, for a function, by the function.
func ListenerName(l events.Listener) string {
	if l == nil {
		return "<nil>"
	}
	if f, ok := l.(events.ListenerFunc); ok && f != nil {
		if fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer()); fn != nil {
			return fn.Name()
		}
	}
	return reflect.TypeOf(l).String()
}
