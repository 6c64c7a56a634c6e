package repo

import (
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/x/mongo/driver/session"
)

// What the repository reads of the driver that driver v2 gives another
// way: the v2 line keeps its own form of this file (internal/genv2).

// clientSession returns the driver's state of s, or nil. The driver gives
// it only through XSession, deprecated as unstable; nothing else tells a
// commit from an abort by the body, or a transaction in progress.
func clientSession(s mongo.Session) *session.Client {
	x, ok := s.(mongo.XSession) //lint:ignore SA1019 the only way to read the transaction's state
	if !ok {
		return nil
	}
	return x.ClientSession()
}

// transactionRunning reports whether s is in a transaction that has not
// committed or aborted.
func transactionRunning(s mongo.Session) bool {
	c := clientSession(s)
	return c != nil && c.TransactionRunning()
}

// committed reports whether sess's last transaction committed, once
// WithTransaction returned no error; leftOpen tells whether the body left
// it running for the driver to commit (it may also abort it itself).
func committed(sess mongo.Session, leftOpen bool) bool {
	c := clientSession(sess)
	return c != nil && c.TransactionCommitted()
}

// deprecatedBulkOptions reports whether o sets an option the driver
// deprecated, which BulkWrite refuses too, not ignores.
func deprecatedBulkOptions(o *options.BulkWriteOptions) bool {
	//lint:ignore SA1019 a deprecated option that is set is refused too, not ignored
	return o.BypassEmptyTsReplacement != nil
}
