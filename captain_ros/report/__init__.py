"""``report.html`` of an episode folder: :func:`~captain_ros.report.html.write_report`."""
