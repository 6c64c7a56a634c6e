package serverinfo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// TxSupport is whether a server runs multi-document transactions, and
// what it is, to say why not.
type TxSupport struct {
	OK     bool
	Server string // "FerretDB 1.24.2", "MongoDB 7.0.2 standalone", ...
}

var txCache clientCache[TxSupport]

// Transactions asks client's server, with buildInfo and hello, whether it
// runs multi-document transactions: a MongoDB replica set member (4.0 and
// later) or mongos (4.2 and later) does; a standalone mongod and FerretDB
// 1.x, even one that reports a replica set name, do not. The answer is
// cached per client.
func Transactions(ctx context.Context, client *mongo.Client) (TxSupport, error) {
	if v, ok := txCache.load(client); ok {
		return v, nil
	}
	admin := client.Database("admin")
	var bi struct {
		Version  string `bson:"version"`
		FerretDB string `bson:"ferretdbVersion"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&bi); err != nil {
		return TxSupport{}, fmt.Errorf("asking the server with buildInfo: %w", err)
	}
	var hello struct {
		SetName    string `bson:"setName"`
		Msg        string `bson:"msg"`
		MaxWireVer int32  `bson:"maxWireVersion"`
	}
	err := admin.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello)
	if ce := (mongo.CommandError{}); errors.As(err, &ce) && ce.Code == 59 { // CommandNotFound: before 4.4.2
		err = admin.RunCommand(ctx, bson.D{{Key: "isMaster", Value: 1}}).Decode(&hello)
	}
	if err != nil {
		return TxSupport{}, fmt.Errorf("asking the server with hello: %w", err)
	}
	var v TxSupport
	switch {
	case bi.FerretDB != "":
		v.Server = "FerretDB"
		if bi.FerretDB != "unknown" { // as a build without version information says
			v.Server += " " + bi.FerretDB
		}
	case hello.Msg == "isdbgrid":
		v = TxSupport{OK: hello.MaxWireVer >= 8, Server: "MongoDB " + bi.Version + " mongos"}
	case hello.SetName != "":
		v = TxSupport{OK: hello.MaxWireVer >= 7, Server: "MongoDB " + bi.Version + " replica set member"}
	default:
		v.Server = "MongoDB " + bi.Version + " standalone"
	}
	txCache.store(client, v)
	return v, nil
}
