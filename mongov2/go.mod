module github.com/mgmevents/mgmevents/mongov2

go 1.26.0
