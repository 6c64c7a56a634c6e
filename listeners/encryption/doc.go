// Package encryption stores the model fields tagged `policy:"encrypt"`
// encrypted, with AES-256-GCM bound to the collection, the field and,
// where the write knows it, the document's _id, and finds
// `policy:"encrypt,eq"` fields by equality through a blind index (an HMAC
// of the value) kept beside them. Encryption is a policy
// (events.Policy): it encrypts what every other listener leaves, decrypts
// before they see a document, runs when events are switched off, and fails
// closed on a query, sort, update or pipeline it cannot answer
// (ErrEncryptedField).
//
// Keys come from outside the code (ParseKeys); the first key of the ring
// encrypts, every key decrypts, and Encryption.Reencrypt moves stored
// values to the current key. docs/encryption.md gives the stored format,
// the threat model and everything that is refused.
package encryption
