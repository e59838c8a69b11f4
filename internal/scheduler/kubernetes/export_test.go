package kubernetes

// SetBeforePatch sets a hook run between a node's read and its patch.
func (d *Drainer) SetBeforePatch(f func(node string)) { d.beforePatch = f }
