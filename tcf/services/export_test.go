package services

// SetAfterLaunchResume sets the test hook run between a launch's resume and
// its reply (nil: none).
func SetAfterLaunchResume(f func()) {
	if f == nil {
		afterLaunchResume.Store(nil)
		return
	}
	afterLaunchResume.Store(&f)
}

// PrefetchedWalks is how many stack walks the agent started at a stop,
// before any client asked.
func (a *Agent) PrefetchedWalks() int {
	a.stacks.mu.Lock()
	defer a.stacks.mu.Unlock()
	return a.stacks.prefetched
}

// SetBeforeWalk sets the test hook run at the start of every stack walk
// (nil: none).
func SetBeforeWalk(f func()) {
	if f == nil {
		beforeWalk.Store(nil)
		return
	}
	beforeWalk.Store(&f)
}
