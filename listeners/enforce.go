package listeners

// The tags each policy enforces (events.TagEnforcer): a repository refuses
// a model that uses one of them when no such policy is on its bus.

// EnforcesTags reports that Tenancy enforces tenant:"id" fields.
func (*Tenancy) EnforcesTags() []string { return []string{"tenant"} }

// EnforcesTags reports that SoftDelete enforces audit:"deletedAt" marks.
func (*SoftDelete) EnforcesTags() []string { return []string{"deletedAt"} }

// EnforcesTags reports that Encryption enforces encrypt tags.
func (*Encryption) EnforcesTags() []string { return []string{"encrypt"} }
