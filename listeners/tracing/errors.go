package tracing

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/mongo"
)

// errorType classifies err for error.type, by what it is: never by its
// text, which may quote values.
func errorType(err error) string {
	var le *events.ListenerError
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
	case errors.Is(err, repo.ErrVersionConflict):
		return "version_conflict"
	case errors.Is(err, repo.ErrInvalidArgument) || errors.Is(err, repo.ErrNilModel):
		return "invalid_argument"
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

// describe says what err is, as errorType does, with the listener and the
// event of a *events.ListenerError and the server's code and code name.
func describe(err error) string {
	var le *events.ListenerError
	if errors.As(err, &le) {
		how := "aborted"
		if !le.Type.Before() {
			how = "failed after"
		}
		return fmt.Sprintf("%v listener %s %s %v (%s)", le.Type, listenerName(le.Listener), how, le.Op, errorTypeOfCause(le.Err))
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return fmt.Sprintf("%s: server error %d %s", errorType(err), ce.Code, ce.Name)
	}
	if code, ok := serverCode(err); ok {
		return fmt.Sprintf("%s: server error %d", errorType(err), code)
	}
	return errorType(err)
}

// errorTypeOfCause classifies a listener's own error.
func errorTypeOfCause(err error) string {
	if err == nil {
		return "_OTHER"
	}
	return errorType(err)
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
