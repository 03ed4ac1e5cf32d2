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
