package blobs

import (
	"bytes"
	"context"

	"github.com/modelexec/modelexec/internal/runners"
)

// Outputs is the runners.Outputs of one job: files land under outputs/<job id>/<name>.
type Outputs struct {
	Store Store
	JobID string
}

var _ runners.Outputs = Outputs{}

// OutputKey is the storage key of output file name of job jobID.
func OutputKey(jobID, name string) string { return "outputs/" + jobID + "/" + name }

// Put stores one output file and returns its key.
func (o Outputs) Put(ctx context.Context, name, contentType string, data []byte) (string, error) {
	key := OutputKey(o.JobID, name)
	if _, err := o.Store.Put(ctx, key, contentType, bytes.NewReader(data)); err != nil {
		return "", err
	}
	return key, nil
}
