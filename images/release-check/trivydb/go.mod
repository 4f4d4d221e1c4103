module ndr.example/images/release-check/trivydb

go 1.25.0

require (
	github.com/aquasecurity/trivy-db v0.0.0-20260813095258-0e0340a01b57
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/oklog/ulid/v2 v2.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/samber/lo v1.50.0 // indirect
	github.com/samber/oops v1.18.1 // indirect
	github.com/stretchr/objx v0.5.2 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	go.opentelemetry.io/otel v1.34.0 // indirect
	go.opentelemetry.io/otel/trace v1.34.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
	golang.org/x/text v0.33.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
