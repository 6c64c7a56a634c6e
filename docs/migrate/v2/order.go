// Package v2 is the model of the migration guide (docs/driver-v2.md) on
// this library's driver-v2 line. It is package v1's file with its imports
// changed, and nothing else.
package v2

import (
	"context"
	"strings"

	"github.com/mgmevents/mgmevents/mongov2/mgm"
)

// Order is an mgm model with an automatic number and two of mgm's hooks.
type Order struct {
	mgm.DefaultModel `bson:",inline"`
	No               int64  `bson:"no" auto:"inc"`
	Customer         string `bson:"customer"`
	Slug             string `bson:"slug"`
	Saves            int    `bson:"saves"`
}

// Creating is mgm's hook before an insert: it fills the slug in.
func (o *Order) Creating(ctx context.Context) error {
	o.Slug = strings.ToLower(strings.ReplaceAll(o.Customer, " ", "-"))
	return nil
}

// Saving is mgm's hook before every write of the model: it counts them.
func (o *Order) Saving(ctx context.Context) error {
	o.Saves++
	return nil
}
