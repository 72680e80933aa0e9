-- Run once by the postgres image on an empty data volume: the trajectory store gets a database of its
-- own next to `arena` (the race log and submissions), so their schemas and backups stay apart.
CREATE DATABASE trajectories OWNER arena;
