// Package listeners holds the built-in listeners that give Go what Spring
// Data MongoDB ships: Logging, Validation and Auditing. AutoKeys, which
// fills `auto` fields, is package autokeys; the policies, which no other
// listener can undo, are in the packages tenancy, softdelete and
// encryption. Register them all on one events.Bus (see the package
// example).
package listeners
