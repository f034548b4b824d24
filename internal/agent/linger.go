package agent

import "time"

// pace decides whether a streamed piece of text lingers (up to textLinger)
// for more text to join it. It lingers only while pieces arrive faster
// than a frame can show them (closer than textLinger apart): then joining
// them costs the reader nothing and saves events. A slower stream (50
// tokens/s: 20 ms apart) never lingers, so each token goes out at once.
type pace struct {
	last time.Time // when the previous piece arrived; zero before the first
}

// hold records a piece arriving at and reports whether it should linger.
func (p *pace) hold(at time.Time) bool {
	fast := !p.last.IsZero() && at.Sub(p.last) < textLinger
	p.last = at
	return fast
}
