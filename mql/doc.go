// Package mql reads and edits the MongoDB Query Language values that
// listeners meet on events: filters of any shape the driver accepts,
// update documents and update pipelines, and aggregation pipelines. And
// adds a condition that nothing in the filter can widen, Equalities and
// Requires read what a filter pins down, ParseUpdate edits an update's
// operators, and Stages reads a pipeline. None of them changes the value
// it is given.
package mql
