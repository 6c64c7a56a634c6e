package repo

import (
	"fmt"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// The driver copies the raw command fields of an Aggregate's or a Watch's
// options (Custom, and a change stream's CustomPipeline) into the command
// unread, where they could carry what the policies check in the typed
// options (a collation, a read concern at a past cluster time) or a second
// pipeline, past every listener. The repository refuses them always, with
// or without a policy on the model, with events on or off, before
// anything is published or sent.

// refuseAggregateCustom refuses AggregateOptions.Custom.
func refuseAggregateCustom(opts []*options.AggregateOptions) error {
	for i, o := range opts {
		if o != nil {
			if err := refuseRaw(i, "Custom", o.Custom); err != nil {
				return err
			}
		}
	}
	return nil
}

// refuseChangeStreamCustom refuses ChangeStreamOptions.Custom and
// CustomPipeline.
func refuseChangeStreamCustom(opts []*options.ChangeStreamOptions) error {
	for i, o := range opts {
		if o == nil {
			continue
		}
		if err := refuseRaw(i, "Custom", o.Custom); err != nil {
			return err
		}
		if err := refuseRaw(i, "CustomPipeline", o.CustomPipeline); err != nil {
			return err
		}
	}
	return nil
}

// refuseRaw refuses the raw fields m, named name, of the options at index
// i, when set (an empty map counts: the caller asked for it). The caller
// wraps the error with its method's name.
func refuseRaw(i int, name string, m bson.M) error {
	if m == nil {
		return nil
	}
	return fmt.Errorf("options %d: %s sets raw command fields (%d), which no policy can check; use the typed options: %w", i, name, len(m), ErrInvalidArgument)
}
