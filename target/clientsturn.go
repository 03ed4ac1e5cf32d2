package target

// ClientWaiter is implemented by backends that keep themselves ready for a
// quick resume after a stop (the ptrace backend's tracer thread spins for a
// moment, polling: a breakpoint loop driven from outside answers within
// ~100 µs). A front end whose client inspects every stop before it resumes
// (an editor asks for the stack, scopes and variables, then a human decides)
// tells the backend so, and it stops waiting awake: the spin only took a
// CPU from the client and from the front end's own handlers.
type ClientWaiter interface {
	// ClientsTurn says the last stop was reported to a client that will
	// look at it before it resumes anything. It only changes how the
	// backend waits for the next request, never what it does.
	ClientsTurn()
}

// ClientsTurn tells the backend, when it cares, that the stop just reported
// is the client's to inspect: the next resume is a round of requests (or a
// human) away. A front end calls it before it sends the stop to the client.
func (t *Target) ClientsTurn() {
	if w, ok := t.backend.(ClientWaiter); ok {
		w.ClientsTurn()
	}
}
