// Package bsonio encodes and decodes whole BSON documents with a given
// registry through the driver's Encoder and Decoder, the API that replaces
// the deprecated bson.MarshalWithRegistry and bson.UnmarshalWithRegistry.
// Encoders are pooled, as those helpers pooled theirs, so that the insert
// path allocates no more than it did with them: one slice for the
// document, besides what the codecs allocate.
package bsonio

import (
	"sync"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/bsonrw"
)

// encoder is an Encoder whose value writer writes into out. The value
// writer keeps its own buffer between uses and writes a top-level document
// to its io.Writer once, when the document ends.
type encoder struct {
	enc *bson.Encoder
	out []byte
}

// Write receives the finished document.
func (e *encoder) Write(p []byte) (int, error) {
	e.out = append(e.out, p...)
	return len(p), nil
}

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	vw, _ := bsonrw.NewBSONValueWriter(e) // fails only for a nil writer
	e.enc, _ = bson.NewEncoder(vw)        // fails only for a nil value writer
	return e
}}

// Marshal returns the BSON document encoding v with registry reg. The
// result is the caller's: nothing else refers to it.
func Marshal(reg *bsoncodec.Registry, v any) (bson.Raw, error) {
	e := encoders.Get().(*encoder)
	_ = e.enc.SetRegistry(reg) // never fails
	err := e.enc.Encode(v)
	out := e.out
	e.out = nil
	if err != nil {
		// The value writer may have stopped inside the document; a fresh
		// one is made for the next call instead.
		return nil, err
	}
	encoders.Put(e)
	return out, nil
}

var decoders = sync.Pool{New: func() any {
	d, _ := bson.NewDecoder(bsonrw.NewBSONDocumentReader(nil)) // fails only for a nil reader
	return d
}}

// Unmarshal decodes the BSON document data into v, a pointer, with
// registry reg.
func Unmarshal(reg *bsoncodec.Registry, data []byte, v any) error {
	d := decoders.Get().(*bson.Decoder)
	_ = d.Reset(bsonrw.NewBSONDocumentReader(data)) // never fails
	_ = d.SetRegistry(reg)                          // never fails
	err := d.Decode(v)
	_ = d.Reset(nil) // let data go while d waits in the pool
	decoders.Put(d)
	return err
}
