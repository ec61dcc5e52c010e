#!/bin/bash
echo "step two started" > /app/step-two.log
