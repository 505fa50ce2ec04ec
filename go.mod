module github.com/redlock-go/redlock

go 1.26.8

require (
	github.com/gomodule/redigo v1.9.3
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
