// Command trivydb writes a Trivy vulnerability database (trivy-db schema 2, the one Trivy v0.74
// reads) holding Debian advisories given as JSON, so that images/release-check.sh can run Trivy's
// vulnerability matching and its VEX filtering where Trivy's own database cannot be downloaded.
// The advisories say only what Debian's tracker says (source package, vulnerability, the first
// fixed version or none, severity); which of them match an image is Trivy's own decision.
//
//	trivydb --cache-dir=DIR ADVISORIES.json
//
// writes DIR/db/trivy.db and DIR/db/metadata.json, for trivy --cache-dir=DIR --skip-db-update.
// ADVISORIES.json: [{"release": "13", "source": "grpc", "vulnerability": "CVE-2023-33953",
// "fixed": "", "severity": "HIGH"}, ...]; "fixed" empty means not fixed in that release.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aquasecurity/trivy-db/pkg/db"
	"github.com/aquasecurity/trivy-db/pkg/metadata"
	"github.com/aquasecurity/trivy-db/pkg/types"
	"github.com/aquasecurity/trivy-db/pkg/vulnsrc/bucket"
	"github.com/aquasecurity/trivy-db/pkg/vulnsrc/vulnerability"
	bolt "go.etcd.io/bbolt"
)

type advisory struct {
	Release       string `json:"release"`
	Source        string `json:"source"`
	Vulnerability string `json:"vulnerability"`
	Fixed         string `json:"fixed"`
	Severity      string `json:"severity"`
}

func run(cacheDir, input string) error {
	data, err := os.ReadFile(input)
	if err != nil {
		return err
	}
	var advisories []advisory
	if err := json.Unmarshal(data, &advisories); err != nil {
		return fmt.Errorf("%s: %w", input, err)
	}
	dir := filepath.Join(cacheDir, "db")
	if err := db.Init(dir); err != nil {
		return fmt.Errorf("opening the database in %s: %w", dir, err)
	}
	defer db.Close()
	config := db.Config{}
	source := types.DataSource{ID: vulnerability.Debian, Name: "Debian Security Tracker",
		URL: "https://salsa.debian.org/security-tracker-team/security-tracker"}
	err = config.BatchUpdate(func(tx *bolt.Tx) error {
		for _, a := range advisories {
			if a.Release == "" || a.Source == "" || a.Vulnerability == "" {
				return fmt.Errorf("%s: an advisory without release, source or vulnerability: %+v", input, a)
			}
			severity, err := types.NewSeverity(a.Severity)
			if err != nil {
				severity = types.SeverityUnknown
			}
			platform := bucket.NewDebian(a.Release).Name()
			if err := config.PutAdvisory(tx, []string{platform, a.Source}, a.Vulnerability,
				types.Advisory{FixedVersion: a.Fixed, Severity: severity}); err != nil {
				return err
			}
			if err := config.PutVulnerability(tx, a.Vulnerability, types.Vulnerability{
				Severity:       severity.String(),
				VendorSeverity: types.VendorSeverity{vulnerability.Debian: severity},
			}); err != nil {
				return err
			}
			if err := config.PutDataSource(tx, platform, source); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	return metadata.NewClient(dir).Update(metadata.Metadata{
		Version: db.SchemaVersion, UpdatedAt: now, DownloadedAt: now,
		NextUpdate: now.Add(365 * 24 * time.Hour),
	})
}

func main() {
	cacheDir := flag.String("cache-dir", "", "Trivy's --cache-dir, where db/ is written")
	flag.Parse()
	if *cacheDir == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: trivydb --cache-dir=DIR ADVISORIES.json")
		os.Exit(2)
	}
	if err := run(*cacheDir, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "trivydb:", err)
		os.Exit(1)
	}
}
