package services

import "github.com/sondedbg/sonde/tcf"

// queryByID registers a command that takes one string — a context ID, or a
// path — and replies "error, data": the shape of most getContext and
// getChildren commands and of FileSystem's stat and path queries. A
// bad argument or a failed query is answered with the error and a null.
func queryByID(svc *tcf.Service, name string, query func(id string) (any, error)) {
	svc.Command(name, func(c *tcf.Call) {
		args := c.Args()
		id := args.String()
		if err := args.End(); err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		v, err := query(id)
		if err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
		c.Reply().Error(nil).Data(v).Send()
	})
}
