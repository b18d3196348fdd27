module github.com/claude-transcript-exporter/claude-transcript-exporter

go 1.26
