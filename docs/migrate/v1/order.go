// Package v1 is the model of the migration guide (docs/driver-v2.md) on
// mgm v3 and driver v1. Package v2 is the same file with its imports
// changed, and nothing else.
package v1

import (
	"context"
	"strings"

	"github.com/kamva/mgm/v3"
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
