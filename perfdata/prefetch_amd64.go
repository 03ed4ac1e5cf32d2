package perfdata

//go:noescape
func prefetchLines(p *byte, n int)
