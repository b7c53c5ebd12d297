package sqlite

import "context"

// openConn opens and migrates the database at path, for the tests of the connection itself.
func openConn(ctx context.Context, path string) (*conn, error) {
	c, err := open(path)
	if err != nil {
		return nil, err
	}
	if err := c.Migrate(ctx, 0); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
