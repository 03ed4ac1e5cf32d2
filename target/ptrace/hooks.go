package ptrace

import "sync"

// hookSet is the functions layers above the backend registered for one kind
// of event (OnDetach, OnForkChild), each removable on its own.
type hookSet[F any] struct {
	mu    sync.Mutex
	next  int
	hooks map[int]F
}

// hookSetOf returns b's set in byBackend (*Backend -> *hookSet[F]), made on
// first use.
func hookSetOf[F any](byBackend *sync.Map, b *Backend) *hookSet[F] {
	v, _ := byBackend.LoadOrStore(b, &hookSet[F]{hooks: map[int]F{}})
	return v.(*hookSet[F])
}

// add registers f; remove unregisters it.
func (s *hookSet[F]) add(f F) (remove func()) {
	s.mu.Lock()
	id := s.next
	s.next++
	s.hooks[id] = f
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.hooks, id)
		s.mu.Unlock()
	}
}

// registered returns b's hooks in byBackend at this moment, to be run
// without the set's lock held (a hook may remove itself).
func registered[F any](byBackend *sync.Map, b *Backend) []F {
	v, ok := byBackend.Load(b)
	if !ok {
		return nil
	}
	s := v.(*hookSet[F])
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := make([]F, 0, len(s.hooks))
	for _, f := range s.hooks {
		fs = append(fs, f)
	}
	return fs
}
