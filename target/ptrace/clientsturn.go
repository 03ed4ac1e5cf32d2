package ptrace

// ClientsTurn implements target.ClientWaiter: the tracer thread ends its
// spin (or skips the next one) until a request comes. After the last stop
// of a `next` a DAP client asks for the stack, scopes and variables, none of
// which needs the tracer thread, and resumes only a round (1-3 ms) or a
// human later: the 250 µs spin found nothing to do and held a CPU that the
// client and the adapter's handlers wanted (on 2 CPUs, the client, the
// stop's prefetch and the spin ran at once).
func (b *Backend) ClientsTurn() { b.clientsTurn.Store(true) }

// clientHasTurn reports whether the client has the turn (see
// ClientsTurn): the tracer thread then waits for work asleep.
func (b *Backend) clientHasTurn() bool { return b.clientsTurn.Load() }

// requested ends the client's turn: a request came to the tracer thread,
// and the rest of its burst (a step's breakpoint, its resume, the legs
// after it) comes quickly again. Ending it only at a resume made the
// requests a step sends before its resume each wake a sleeping thread.
func (b *Backend) requested() { b.clientsTurn.Store(false) }
