module github.com/mgmevents/mgmevents/docs/migrate

go 1.26.0

require (
	github.com/kamva/mgm/v3 v3.5.0
	github.com/mgmevents/mgmevents v0.0.0
	github.com/mgmevents/mgmevents/mongov2 v0.0.0
	github.com/stretchr/testify v1.12.1
	go.mongodb.org/mongo-driver v1.17.9
	go.mongodb.org/mongo-driver/v2 v2.10.0
)

require (
	github.com/golang/snappy v1.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/montanaflynn/stats v0.7.1 // indirect
	github.com/xdg-go/scram v1.4.0 // indirect
	github.com/xdg-go/stringprep v1.0.4 // indirect
	github.com/youmark/pkcs8 v0.0.0-20240726163527-a2c0da244d78 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace (
	github.com/mgmevents/mgmevents => ../..
	github.com/mgmevents/mgmevents/mongov2 => ../../mongov2
)
