#!/bin/bash
echo done > status.txt
sleep 60
