package client

import (
	"context"
	"time"
)

// SetSleep replaces how c waits between status reads, so tests of Wait's pacing take no time.
func SetSleep(c *Client, f func(context.Context, time.Duration) error) { c.sleep = f }
