package app

// SetAfterStoreOpen runs f in Start between the first read of the mounted files and their
// watches (the wait for the store); the returned func undoes it.
func SetAfterStoreOpen(f func()) (undo func()) {
	afterStoreOpen = f
	return func() { afterStoreOpen = nil }
}
