#!/bin/bash
echo quiet > /app/word.txt
