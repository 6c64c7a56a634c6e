package model_test

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/model"
)

type Invoice struct {
	mgm.DefaultModel `bson:",inline"`
	No               string `bson:"no" auto:"inc,format=INV{date:2006}{seq:6}"`
	Ref              string `bson:"ref" auto:"uuid,v7"`
}

func ExampleOf() {
	s, err := model.Of(reflect.TypeFor[*Invoice]())
	if err != nil {
		panic(err)
	}
	fmt.Println("collection:", s.Collection)
	for _, a := range s.Auto {
		fmt.Printf("%s (%s): %s, sequence %q\n", a.Name, a.BSON, a.Kind, a.Seq)
	}
	// Output:
	// collection: invoices
	// No (no): inc, sequence "invoices.no"
	// Ref (ref): uuid, sequence ""
}

type Broken struct {
	mgm.DefaultModel `bson:",inline"`
	Count            float64 `bson:"count" auto:"inc"`
}

func ExampleTagError() {
	_, err := model.For[*Broken]()
	fmt.Println(err)
	fmt.Println(errors.Is(err, model.ErrInvalidTag))
	// Output:
	// model: type *model_test.Broken field Count `auto:"inc"`: inc needs an int, int32, int64, uint32 or uint64 field, not float64
	// true
}

func ExampleParseFormat() {
	f, err := model.ParseFormat("ORD{date:060102}{seq:5}")
	if err != nil {
		panic(err)
	}
	day := f.Period(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	fmt.Println(string(f.Append(nil, day, 42)))
	fmt.Println(string(f.Append(nil, day, 1234567)))
	// Output:
	// ORD26113000042
	// ORD2611301234567
}
