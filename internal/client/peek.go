package client

// connState is what peek finds on an idle connection.
type connState int

const (
	idle       connState = iota // open, nothing to read (or the platform cannot tell)
	peerClosed                  // the peer closed it (end of file or reset)
	pending                     // bytes are waiting to be read
)
