package neutron

// SetIDsPerRequest sets how many IDs one request of Observe filters by, so
// that a test sees several batches without hundreds of networks.
func SetIDsPerRequest(b *Backend, n int) { b.idsPerRequest = n }
