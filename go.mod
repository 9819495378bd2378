module github.com/habench/habench

go 1.26.8

require github.com/go-sql-driver/mysql v1.10.1

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/HdrHistogram/hdrhistogram-go v1.4.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	golang.org/x/sys v0.10.0 // indirect
)
