package main

// StudioFlags are the serve flags of the studio domain.
type StudioFlags struct {
	StudioOrigins []string `help:"Origins whose pages may open the studio live route with a ticket, e.g. --studio-origins https://app.example.com,https://staging.example.com (scheme, host and port, no path). Empty, as shipped: no browser may connect."`
}
