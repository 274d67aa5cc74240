package network

// CloudKeys returns the keys of the clouds of the Networks' own
// credentials the controller holds.
func (c *Controller) CloudKeys() []string {
	var keys []string
	for _, cl := range c.clouds.all() {
		keys = append(keys, cl.key)
	}
	return keys
}
