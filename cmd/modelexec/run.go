package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelexec/modelexec/client"
)

// SDKFlags locate the service for the user commands (run, quote); they go through the public
// Go SDK, as any application would.
type SDKFlags struct {
	Key      string `help:"API key (or MODELEXEC_KEY)."`
	APIURL   string `name:"api-url" default:"http://127.0.0.1:8080" help:"Base URL of the account API."`
	QueueURL string `name:"queue-url" default:"http://127.0.0.1:8081" help:"Base URL of the queue host."`
}

func (f SDKFlags) client() (*client.Client, error) {
	if f.Key == "" {
		return nil, fmt.Errorf("no API key: pass --key or set MODELEXEC_KEY")
	}
	return client.New(f.Key, client.WithAPIURL(f.APIURL), client.WithQueueURL(f.QueueURL)), nil
}

// RunCmd submits one job, follows it and downloads its outputs.
type RunCmd struct {
	SDKFlags
	Model   string   `arg:"" help:"Model: svc-serverless/<slug> or the slug."`
	Input   []string `short:"i" sep:"none" help:"Input field as key=value (repeatable; the value is taken whole, commas included); dotted keys nest (inputs.image=…); a value that parses as JSON is taken as JSON, otherwise as a string."`
	File    []string `short:"f" sep:"none" help:"Upload a local file for a url field: field=path (repeatable; png, jpeg, webp)."`
	Out     string   `help:"Folder to download the outputs (and result.json) into; without it the result is printed."`
	IdemKey string   `name:"idempotency-key" help:"Idempotency key: running again with the same key answers the first job and is not charged again."`
}

func (c *RunCmd) Run(e *env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	input, err := parseInputs(c.Input)
	if err != nil {
		return err
	}
	for _, f := range c.File {
		field, p, ok := strings.Cut(f, "=")
		if !ok || field == "" || p == "" {
			return fmt.Errorf("--file %q: write field=path", f)
		}
		up, err := uploadFile(e.ctx, cl, p)
		if err != nil {
			return fmt.Errorf("--file %s: %w", field, err)
		}
		fmt.Fprintf(e.stderr, "uploaded %s\n", p)
		if err := setPath(input, field, up.ReadURL); err != nil {
			return err
		}
	}
	job, err := cl.Submit(e.ctx, c.Model, input, client.SubmitOptions{IdempotencyKey: c.IdemKey})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "submitted %s (quoted %d credits)\n", job.RequestID, job.CreditsQuoted)
	p := newProgress(e.stderr)
	// Followed by the job's own model: a replayed key answers the first job, which may be of
	// another model than the one asked for.
	final, err := cl.WaitJob(e.ctx, job, p.show)
	p.end()
	if err != nil {
		return err
	}
	result, err := cl.ResultJob(e.ctx, job)
	if err != nil {
		return err
	}
	// The status documents of a settled job carry no charge: the job record says what it cost.
	// A replay is not charged again; its record says what the first run cost.
	if job.Replayed {
		fmt.Fprintf(e.stderr, "replayed %s: the idempotency key answered its first job; nothing was charged this time\n", final.RequestID)
	} else if charged, err := c.charged(e.ctx, final.RequestID); err == nil {
		fmt.Fprintf(e.stderr, "completed %s (charged %d credits)\n", final.RequestID, charged)
	} else {
		fmt.Fprintf(e.stderr, "completed %s (its charge could not be read: %v; GET /v1/jobs on the account API lists it)\n", final.RequestID, err)
	}
	if c.Out == "" {
		_, err = fmt.Fprintln(e.stdout, string(result))
		return err
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.Out, "result.json"), append(result, '\n'), 0o644); err != nil {
		return err
	}
	for i, u := range outputURLs(result) {
		name, err := download(e.ctx, u, c.Out, i)
		if err != nil {
			return fmt.Errorf("downloading output %d: %w", i+1, err)
		}
		fmt.Fprintln(e.stdout, name)
	}
	return nil
}

// charged reads what a job cost from its job record on the account API (credits_charged,
// after any refund; 0 when a pass paid or on a replay). The record's id is not the request id
// (it is <product>_<key>, or minted when an idempotency key was given), so the account's most
// recent jobs (GET /v1/jobs) are searched for the one whose queue_request_id is this request id.
func (c *RunCmd) charged(ctx context.Context, requestID string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.APIURL, "/")+"/v1/jobs?limit=100", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("the account API answered %s", res.Status)
	}
	var list struct {
		Data []struct {
			QueueRequestID string `json:"queue_request_id"`
			CreditsCharged *int64 `json:"credits_charged"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 16<<20)).Decode(&list); err != nil {
		return 0, err
	}
	for _, j := range list.Data {
		if j.QueueRequestID == requestID && j.CreditsCharged != nil {
			return *j.CreditsCharged, nil
		}
	}
	return 0, fmt.Errorf("the job is not among the account's 100 most recent")
}

// parseInputs builds the JSON input from key=value pairs.
func parseInputs(pairs []string) (map[string]any, error) {
	in := map[string]any{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--input %q: write key=value", kv)
		}
		var val any = v
		var parsed any
		if json.Unmarshal([]byte(v), &parsed) == nil {
			val = parsed
		}
		if err := setPath(in, k, val); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// setPath sets a dotted key (inputs.image) in m, making the objects on the way.
func setPath(m map[string]any, key string, v any) error {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p]
		if !ok {
			child := map[string]any{}
			m[p], m = child, child
			continue
		}
		child, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("input %q: %q is already a value, not an object", key, p)
		}
		m = child
	}
	m[parts[len(parts)-1]] = v
	return nil
}

func uploadFile(ctx context.Context, cl *client.Client, p string) (*client.Upload, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ct := mime.TypeByExtension(strings.ToLower(filepath.Ext(p)))
	if ct == "" {
		head := make([]byte, 512)
		n, _ := io.ReadFull(f, head)
		ct = http.DetectContentType(head[:n])
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return cl.Upload(ctx, ct, f)
}

// outputURLs are the links in a result: every string value of a field named url (the service
// answers files as signed links there), in document order.
func outputURLs(result json.RawMessage) []string {
	var doc any
	if json.Unmarshal(result, &doc) != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if s, ok := t["url"].(string); ok && (strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")) {
				out = append(out, s)
			}
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if k != "url" {
					walk(t[k])
				}
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(doc)
	return out
}

// download saves u into dir under the link's file name (prefixed by its index when two share
// a name) and returns the path written.
func download(ctx context.Context, u, dir string, i int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	name := "output"
	if pu, err := url.Parse(u); err == nil && path.Base(pu.Path) != "/" && path.Base(pu.Path) != "." {
		name = path.Base(pu.Path)
	}
	dest := filepath.Join(dir, filepath.Base(name))
	if _, err := os.Stat(dest); err == nil {
		dest = filepath.Join(dir, fmt.Sprintf("%d-%s", i+1, filepath.Base(name)))
	}
	f, err := os.Create(dest)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return "", err
	}
	return dest, f.Close()
}

// progress shows the job's state: one line rewritten in place on a terminal, otherwise a
// plain line per change (logs included), so a log file reads well.
type progress struct {
	w    io.Writer
	tty  bool
	last string
	logs int
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) show(j *client.Job) {
	line := j.Status
	if j.QueuePosition != nil && j.Status == "IN_QUEUE" {
		line += fmt.Sprintf(" (position %d)", *j.QueuePosition)
	}
	for _, l := range j.Logs[min(p.logs, len(j.Logs)):] {
		if p.tty {
			fmt.Fprintf(p.w, "\r\033[K%s\n", l.Message)
		} else {
			fmt.Fprintln(p.w, "log:", l.Message)
		}
	}
	p.logs = max(p.logs, len(j.Logs))
	if line == p.last {
		return
	}
	p.last = line
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

func (p *progress) end() {
	if p.tty && p.last != "" {
		fmt.Fprintln(p.w)
	}
}
