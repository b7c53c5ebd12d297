package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/modelexec/modelexec/internal/catalog"
)

// CatalogueCmd prints the built-in catalogue: the starting point for an operator's own file,
// which `serve --catalogue FILE` loads instead.
type CatalogueCmd struct {
	Check string `help:"Check a catalogue file instead of printing the built-in one: it must load as serve would load it." type:"existingfile"`
}

func (c *CatalogueCmd) Run(e *env) error {
	if c.Check != "" {
		cat, err := loadCatalogue(c.Check, catalog.Hosts{})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s: %d models\n", c.Check, len(cat.Models()))
		return nil
	}
	_, err := e.stdout.Write(catalog.DefaultData())
	return err
}

// loadCatalogue reads the catalogue serve runs: the built-in one, or the operator's file
// (the shape of `modelexec catalogue`'s output), checked the same way and refused when it
// shortens a time limit the built-in one publishes (VER-06).
func loadCatalogue(path string, hosts catalog.Hosts) (*catalog.Catalog, error) {
	if path == "" {
		return catalog.Default(catalog.WithHosts(hosts))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	cat, err := catalog.Load(bytes.NewReader(b), catalog.WithHosts(hosts))
	if err != nil {
		return nil, fmt.Errorf("catalogue %s: %w", path, err)
	}
	published, err := catalog.Default(catalog.WithHosts(hosts))
	if err != nil {
		return nil, err
	}
	if err := catalog.KeepsLimits(published, cat); err != nil {
		return nil, fmt.Errorf("catalogue %s: %w", path, err)
	}
	return cat, nil
}
