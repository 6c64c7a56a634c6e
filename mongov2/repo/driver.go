// Written by hand: the driver-v2 form of repo/driver.go, which reads what
// driver v1 gives through other APIs.

package repo

import (
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// transactionRunning reports whether s is in a transaction that has not
// committed or aborted.
func transactionRunning(s *mongo.Session) bool { return s != nil && s.TransactionRunning() }

// committed reports whether sess's last transaction committed, once
// WithTransaction returned no error: driver v2 does not tell a commit from
// an abort, so it committed when the body left it running (the driver
// commits it, and an error of the commit would have been returned). A body
// that commits the transaction itself counts as one that aborted it: its
// async events are dropped.
func committed(_ *mongo.Session, leftOpen bool) bool { return leftOpen }

// deprecatedBulkOptions reports whether o sets an option the driver
// deprecated; driver v2 has none of v1's.
func deprecatedBulkOptions(*options.BulkWriteOptions) bool { return false }
