// Package mongov2 is the root of mgmevents' line for MongoDB Go driver v2
// (go.mongodb.org/mongo-driver/v2). Its packages mirror the mgm v3 line's,
// under github.com/mgmevents/mgmevents/mongov2/..., and are generated from
// it, except the model package mgm, which stands in for mgm v3.
package mongov2
