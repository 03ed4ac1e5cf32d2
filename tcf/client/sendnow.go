package client

// SendNow is Send, but the command is written from the calling goroutine
// instead of by the client's writer goroutine. Send is for bursts (the writer
// batches queued commands into one write); SendNow is for the one command an
// event handler answers with (the next resume after a stop), where waking
// the writer would only add a goroutine hop to the round trip. It may block
// while the socket is full, like Call.
func (c *Client) SendNow(service, command string, args ...any) (*Pending, error) {
	p, err := c.send(service, command, args, nil, false)
	if err != nil {
		return nil, err
	}
	if err := c.flushOnce(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	left := len(c.out) > 0 // another goroutine was writing: let the writer finish
	c.mu.Unlock()
	if left {
		c.signal()
	}
	return p, nil
}
