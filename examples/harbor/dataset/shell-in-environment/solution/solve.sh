#!/bin/bash
pwd > where.txt && cat /opt/task/marker.txt seed.txt | tee found.txt
