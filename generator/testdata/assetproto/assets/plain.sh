#!/bin/sh
echo "a script"

# with a blank line
